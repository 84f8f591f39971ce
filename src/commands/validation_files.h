// What the step suite (validate.cc) and the kernel suite (validate_kernels.cc) share: the files
// under the paths a user names, and the error tally (MAPE, bias, shares within ±10% and ±15%).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "core/result.h"

namespace stagecraft {

// The files under each path (a file, or a folder's files ending in `extension`), sorted. `what`
// names the command in messages ("validate"), `expected` the default folder.
Result<std::vector<std::string>> SuiteFiles(const std::vector<std::string>& paths,
                                            const std::string& extension, const std::string& what,
                                            const std::string& expected);

// Signed errors (predicted - measured) / measured, summed up.
struct ErrorTally {
  size_t runs = 0;
  double absolute_error = 0;  // summed |error|
  double signed_error = 0;    // summed error
  size_t within_10 = 0;
  size_t within_15 = 0;
  void Add(double error) {
    ++runs;
    absolute_error += std::abs(error);
    signed_error += error;
    within_10 += std::abs(error) <= 0.10 ? 1 : 0;
    within_15 += std::abs(error) <= 0.15 ? 1 : 0;
  }
  void Merge(const ErrorTally& other) {
    runs += other.runs;
    absolute_error += other.absolute_error;
    signed_error += other.signed_error;
    within_10 += other.within_10;
    within_15 += other.within_15;
  }
  double mape() const { return runs == 0 ? 0.0 : absolute_error / static_cast<double>(runs); }
  double bias() const { return runs == 0 ? 0.0 : signed_error / static_cast<double>(runs); }
  // The shares within ±10% and ±15% (0 when empty).
  double share_10() const {
    return static_cast<double>(within_10) / static_cast<double>(std::max<size_t>(runs, 1));
  }
  double share_15() const {
    return static_cast<double>(within_15) / static_cast<double>(std::max<size_t>(runs, 1));
  }
};

}  // namespace stagecraft
