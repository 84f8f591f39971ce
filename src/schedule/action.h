// Action: one compute op of a schedule, written `{stage}{F|B|I|W}{microbatch}` as in
// torch.distributed.pipelining (e.g. "2F0", "5I3"). B = I + W (DESIGN.md §1).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/ids.h"
#include "core/result.h"

namespace stagecraft {

enum class ActionKind : uint8_t {
  kForward,     // F
  kBackward,    // B: full backward (input and weight gradients)
  kInputGrad,   // I: input-gradient backward (the Zero-Bubble papers' "B")
  kWeightGrad,  // W: weight-gradient backward
};

char ActionKindLetter(ActionKind kind);

struct Action {
  StageId stage;
  ActionKind kind = ActionKind::kForward;
  MicrobatchId microbatch;
  // True when this action runs fused with the previous action of its rank as one overlapped
  // F&B op (DualPipe): the pair starts when both have their inputs and ends together, and
  // costs the F&B cost (DESIGN.md §1). Not part of the action's identity (SameAction).
  bool overlapped = false;
  bool operator==(const Action&) const = default;
};

// Same stage, kind and microbatch (ignores `overlapped`).
inline bool SameAction(const Action& a, const Action& b) {
  return a.stage == b.stage && a.kind == b.kind && a.microbatch == b.microbatch;
}

// "2F0".
std::string FormatAction(const Action& action);
// Parses "2F0" (surrounding spaces allowed). Errors say what was expected.
Result<Action> ParseAction(std::string_view text);

// True for the actions that end a microbatch-stage's input-gradient work (B or I): the
// activation stashed by F is released (its M_B part) there.
inline bool ReleasesActivation(ActionKind kind) {
  return kind == ActionKind::kBackward || kind == ActionKind::kInputGrad;
}

}  // namespace stagecraft
