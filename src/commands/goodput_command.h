// `stagecraft goodput` as text: fault/goodput.h's result as a table, JSON or an HTML report.
#pragma once

#include "commands/transcript.h"
#include "fault/goodput.h"

namespace stagecraft {

Status RunGoodput(const GoodputSpec& spec, Transcript& transcript);

}  // namespace stagecraft
