// The base config the reader fuzz targets read over: a cluster of one node of 8 GPUs, the rest
// default (what a launch file is read against when no config is given).
#pragma once

#include "io/config.h"

inline stagecraft::Config OneNodeOfEight() {
  stagecraft::Config base;
  base.cluster.given = true;
  base.cluster.nodes = 1;
  base.cluster.devices_per_node = 8;
  return base;
}
