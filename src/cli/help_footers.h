// The text that ends each command's --help: what its output's columns or figures mean.
#pragma once

namespace stagecraft {

const char* TopLevelHelpFooter();    // stagecraft --help
const char* CheckHelpFooter();       // stagecraft check --help: exit codes and p2p modes
const char* ListHelpFooter();        // stagecraft list --help
const char* CommHelpFooter();        // stagecraft comm --help: algbw, busbw and their factors
const char* KernelHelpFooter();      // stagecraft kernel --help: the model and its bounds
const char* MemoryHelpFooter();      // stagecraft memory --help: the table's columns
const char* ValidateHelpFooter();    // stagecraft validate --help: the error measure
const char* PlanHelpFooter();        // stagecraft plan --help: the search and the table
const char* ExportHelpFooter();      // stagecraft export --help: what is checked and written
const char* CheckpointHelpFooter();  // stagecraft checkpoint --help: the manifest's columns
const char* GoodputHelpFooter();     // stagecraft goodput --help: the models and their sources
const char* ServeHelpFooter();       // stagecraft serve --help: what one serving run models
// stagecraft serve-plan --help: the search
const char* ServePlanHelpFooter();

}  // namespace stagecraft
