// Planted: the command line reaches past its one dependency to the module below it.
#pragma once

#include "core/time.h"
#include "mid/run.h"
