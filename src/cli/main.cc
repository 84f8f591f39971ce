// stagecraft: the binary is the library plus this thin main.
#include <iostream>

#include "cli/app.h"

int main(int argc, char** argv) {
  const int code = stagecraft::RunCli(argc, argv, std::cout, std::cerr);
  return stagecraft::FinishStdout(code, std::cerr);
}
