// stagecraft: the binary is the library plus this thin main.
#include <iostream>

#include "cli/app.h"

int main(int argc, char** argv) { return stagecraft::RunCli(argc, argv, std::cout, std::cerr); }
