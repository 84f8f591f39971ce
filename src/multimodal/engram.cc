#include "multimodal/engram.h"

namespace stagecraft {

int64_t EngramRowBytes(const EngramSpec& spec) {
  return spec.values_per_row + spec.values_per_row / spec.scale_columns;
}

int64_t EngramLookupBytesPerToken(const EngramSpec& spec) {
  return int64_t{spec.lookups_per_token} * EngramRowBytes(spec);
}

int64_t EngramOwnerBytes(const EngramSpec& spec, int32_t owners) {
  int64_t bytes = 0;
  for (const int64_t rows : spec.table_rows) {
    bytes += (rows + owners - 1) / owners * EngramRowBytes(spec);
  }
  return bytes;
}

}  // namespace stagecraft
