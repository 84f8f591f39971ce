// The config `stagecraft simulate` runs when given none, compiled into the binary.
#pragma once

namespace stagecraft {

const char* BundledConfigName();  // the example file it was made from
const char* BundledConfigText();  // its YAML

}  // namespace stagecraft
