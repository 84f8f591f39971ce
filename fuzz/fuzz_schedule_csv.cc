// libFuzzer target: the schedule CSV reader (schedule/schedule_csv.h) on arbitrary text. A CSV it
// accepts must survive a round trip: written back and read again, it gives the same schedule.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "schedule/schedule_csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto schedule = stagecraft::ParseScheduleCsv(text, "fuzz.csv");
  if (!schedule.ok()) return 0;
  auto again =
      stagecraft::ParseScheduleCsv(stagecraft::WriteScheduleCsv(schedule.value()), "fuzz.csv");
  if (!again.ok() || again.value().rank_actions != schedule.value().rank_actions) {
    __builtin_trap();
  }
  return 0;
}
