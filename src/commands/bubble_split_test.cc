// The bubble split sums to the idle time (property): every config the golden tests and examples
// use, simulated as `stagecraft simulate` would, has each rank's pipeline + exposed collectives +
// exposed point-to-point + exposed state equal to its idle time, to the nanosecond.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "commands/commands.h"
#include "run/run_setup.h"
#include "schedule/generator.h"

namespace stagecraft {
namespace {

std::vector<std::string> ConfigsUnder(const std::filesystem::path& folder) {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(folder)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
      paths.push_back(entry.path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

TEST(BubbleSplitPropertyTest, SumsToIdleOnEveryGoldenConfig) {
  std::vector<std::string> paths =
      ConfigsUnder(std::filesystem::path(STAGECRAFT_TESTS_DIR) / "golden" / "data");
  for (const std::string& example :
       ConfigsUnder(std::filesystem::path(STAGECRAFT_TESTS_DIR) / ".." / "examples")) {
    paths.push_back(example);
  }
  std::vector<RunSpec> runs;
  for (const std::string& path : paths) {
    RunSpec flags;
    flags.config_path = path;
    runs.push_back(flags);
  }
  // Every schedule generator on a uniform model, a CSA2 layer list and a transformer with TP
  // and DP collectives.
  for (const char* config : {"uniform.yaml", "csa2-payload.yaml", "hf-run.yaml"}) {
    for (const std::string& schedule : AllScheduleNames()) {
      RunSpec flags;
      flags.config_path =
          (std::filesystem::path(STAGECRAFT_TESTS_DIR) / "golden" / "data" / config).string();
      flags.schedule = schedule;
      runs.push_back(flags);
    }
  }
  int32_t checked = 0;
  int32_t with_communication = 0;
  for (const RunSpec& flags : runs) {
    const std::string path = flags.config_path + (flags.schedule ? " " + *flags.schedule : "");
    auto run = PrepareRun(flags);
    if (!run.ok() && flags.schedule) {  // V and interleaved schedules: two chunks per rank
      RunSpec two_chunks = flags;
      two_chunks.vpp = "2";
      run = PrepareRun(two_chunks);
    }
    if (!run.ok()) continue;  // the error goldens' configs
    RunOutcome simulated;
    std::ostringstream err;
    if (!SimulateRun(run.value(), simulated, err).ok()) continue;  // broken on purpose
    const Metrics& metrics = simulated.metrics;
    Time idle;
    for (const RankMetrics& rank : metrics.ranks) {
      EXPECT_EQ(rank.bubble.total(), rank.idle) << path << " rank " << rank.rank;
      idle += rank.idle;
    }
    EXPECT_EQ(metrics.bubble.total(), idle) << path;
    if (metrics.bubble.exposed_collectives > Time() || metrics.bubble.exposed_p2p > Time()) {
      ++with_communication;
    }
    ++checked;
  }
  // The property is tested on many runs, with communication among them.
  EXPECT_GE(checked, 55);
  EXPECT_GE(with_communication, 10);
}

}  // namespace
}  // namespace stagecraft
