// Strong integer ids: DeviceId, StageId, MicrobatchId, LayerId cannot be mixed up.
#pragma once

#include <compare>
#include <cstdint>

namespace stagecraft {

template <typename Tag>
class StrongId {
 public:
  constexpr StrongId() = default;
  constexpr explicit StrongId(int32_t value) : value_(value) {}
  constexpr int32_t value() const { return value_; }
  constexpr auto operator<=>(const StrongId&) const = default;

 private:
  int32_t value_ = 0;
};

using DeviceId = StrongId<struct DeviceTag>;
using StageId = StrongId<struct StageTag>;
using MicrobatchId = StrongId<struct MicrobatchTag>;
using LayerId = StrongId<struct LayerTag>;

}  // namespace stagecraft
