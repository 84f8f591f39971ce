#include "io/files.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace stagecraft {

Result<std::string> ReadTextFile(const std::string& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (std::filesystem::is_directory(status)) {
    return Error{"cannot read '" + path + "': it is a directory (expected a file)"};
  }
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    return Error{"cannot read '" + path +
                 "': not a regular file (expected a file, not a device, pipe or socket)"};
  }
  std::ifstream stream(path, std::ios::binary);
  if (!stream) {
    return Error{"cannot read '" + path + "': no such file or not readable (check the path)"};
  }
  std::ostringstream buffer;
  buffer << stream.rdbuf();
  return buffer.str();
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  if (!stream) return Error{"cannot write '" + path + "' (check that its folder exists)"};
  stream << text;
  if (!stream) return Error{"failed writing '" + path + "'"};
  return Status::Ok();
}

const Files& LocalFiles() {
  static const Files kLocal{ReadTextFile, WriteTextFile};
  return kLocal;
}

}  // namespace stagecraft
