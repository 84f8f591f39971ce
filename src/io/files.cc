#include "io/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace stagecraft {

namespace {

namespace fs = std::filesystem;

// One file of an output on its way: its target (a link followed to its file), whether it is
// written in place, the temporary beside it and the descriptor while one is open.
struct PendingFile {
  const FileToWrite* file = nullptr;
  std::string target;
  bool in_place = false;
  std::string temporary;
  int descriptor = -1;
};

// Writes all of `text`; 0 or the errno of the failure.
int WriteAll(int descriptor, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t written = ::write(descriptor, text.data() + done, text.size() - done);
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += static_cast<size_t>(written);
  }
  return 0;
}

// "cannot write 'out.csv': No space left on device (nothing written; free some space)".
Error WriteError(const std::string& path, int code, size_t files) {
  const char* check = code == ENOSPC || code == EDQUOT ? "free some space on its disk"
                      : code == EACCES || code == EPERM || code == EROFS
                          ? "check the permissions of its folder"
                          : "check the path";
  const std::string nothing =
      files > 1 ? "none of the " + std::to_string(files) + " files written" : "nothing written";
  return Error{"cannot write '" + path + "': " + std::strerror(code) + " (" + nothing + "; " +
               check + ")"};
}

// Where `file` goes, or why it cannot go there.
Status Locate(const FileToWrite& file, PendingFile& pending) {
  const std::string& path = file.path;
  if (path.empty()) return Error{"cannot write a file with an empty name (expected a file name)"};
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (fs::is_directory(status)) {
    return Error{"cannot write '" + path +
                 "': it is a directory (expected a file there: move the folder away or name "
                 "another file; nothing written)"};
  }
  pending.file = &file;
  pending.target = path;
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    pending.in_place = true;  // a device or a pipe: nothing to rename over
    return Status::Ok();
  }
  if (fs::exists(status) && fs::is_symlink(fs::symlink_status(path, error))) {
    const fs::path resolved = fs::canonical(path, error);  // the link stays, its file changes
    if (!error) pending.target = resolved.string();
  }
  fs::path folder = fs::path(pending.target).parent_path();
  if (folder.empty()) folder = ".";
  const fs::file_status folder_status = fs::status(folder, error);
  if (!fs::exists(folder_status)) {
    return Error{"cannot write '" + path + "': its folder '" + folder.string() +
                 "' does not exist (create it first; nothing written)"};
  }
  if (!fs::is_directory(folder_status)) {
    return Error{"cannot write '" + path + "': '" + folder.string() +
                 "' is not a folder (expected a file name in a folder; nothing written)"};
  }
  return Status::Ok();
}

// Opens a new temporary beside the target, ".NAME.PID.N.tmp", created exclusively (so the
// umask applies and nothing else is overwritten); a rewrite keeps the target's mode. 0 or the
// errno.
int OpenTemporary(PendingFile& pending) {
  const fs::path target(pending.target);
  const fs::path folder = target.parent_path();
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string name = "." + target.filename().string() + "." + std::to_string(::getpid()) +
                             "." + std::to_string(attempt) + ".tmp";
    const std::string temporary = folder.empty() ? name : (folder / name).string();
    const int descriptor = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (descriptor < 0) {
      if (errno == EEXIST) continue;
      return errno;
    }
    pending.temporary = temporary;
    pending.descriptor = descriptor;
    struct stat existing {};
    if (::stat(pending.target.c_str(), &existing) == 0) {
      ::fchmod(descriptor, existing.st_mode & 07777);
    }
    return 0;
  }
  return EEXIST;
}

// Writes one file's text to its temporary, or in place; 0 or the errno. A write is complete
// only once close() succeeds (a full disk may report itself there).
int WriteOne(PendingFile& one) {
  if (one.in_place) {
    one.descriptor = ::open(one.target.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (one.descriptor < 0) return errno;
  } else if (const int code = OpenTemporary(one); code != 0) {
    return code;
  }
  int code = WriteAll(one.descriptor, one.file->text);
  if (::close(one.descriptor) != 0 && code == 0) code = errno;
  one.descriptor = -1;
  return code;
}

void RemoveTemporaries(std::vector<PendingFile>& pending) {
  for (PendingFile& one : pending) {
    if (one.descriptor >= 0) ::close(one.descriptor);
    one.descriptor = -1;
    if (!one.temporary.empty()) ::unlink(one.temporary.c_str());
    one.temporary.clear();
  }
}

}  // namespace

Result<std::string> ReadTextFile(const std::string& path) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (fs::is_directory(status)) {
    return Error{"cannot read '" + path + "': it is a directory (expected a file)"};
  }
  if (fs::exists(status) && !fs::is_regular_file(status)) {
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

Status WriteTextFiles(const std::vector<FileToWrite>& files) {
  std::vector<PendingFile> pending(files.size());
  for (size_t index = 0; index < files.size(); ++index) {
    STAGECRAFT_RETURN_IF_ERROR(Locate(files[index], pending[index]));
  }
  // The temporaries first, then what is written in place: a failure before the renames leaves
  // every regular file as it was.
  for (const bool in_place : {false, true}) {
    for (PendingFile& one : pending) {
      if (one.in_place != in_place) continue;
      if (const int code = WriteOne(one); code != 0) {
        RemoveTemporaries(pending);
        return WriteError(one.file->path, code, files.size());
      }
    }
  }
  for (PendingFile& one : pending) {
    if (one.in_place) continue;
    if (::rename(one.temporary.c_str(), one.target.c_str()) != 0) {
      const int code = errno;
      RemoveTemporaries(pending);
      return Error{"cannot write '" + one.file->path + "': " + std::strerror(code) +
                   " (renaming its complete temporary failed; the files before it in the "
                   "output were written)"};
    }
    one.temporary.clear();
  }
  return Status::Ok();
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  return WriteTextFiles({FileToWrite{path, text}});
}

const Files& LocalFiles() {
  static const Files kLocal{ReadTextFile, WriteTextFiles};
  return kLocal;
}

}  // namespace stagecraft
