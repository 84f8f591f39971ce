// Simulates the bundled example through the installed run library and prints its makespan as
// `stagecraft simulate` does (tests/install/find_package.sh compares the two).
#include <cstdio>

#include "run/simulate.h"

int main() {
  stagecraft::RunSpec spec;  // no config: the bundled example, compiled into the library
  const stagecraft::Result<stagecraft::RunOutcome> outcome = stagecraft::SimulateSpec(spec);
  if (!outcome.ok()) {
    std::fputs(stagecraft::FormatError(outcome.error()).c_str(), stderr);
    return 1;
  }
  const long long ns = outcome.value().metrics.makespan.ns();
  std::printf("makespan %lld.%06lld ms\n", ns / 1'000'000, ns % 1'000'000);
  return 0;
}
