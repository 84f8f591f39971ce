// Planted: the lowest module reaches up to the command line.
#pragma once

#include "cli/app.h"
