// open_file: open(2) as every sink and source opens a path.
#pragma once

#include <sys/types.h>

#include <string>

#include "sluice/sinks/file_options.h"

namespace sluice::detail {

/// open(2) with O_CLOEXEC added, EINTR retried: the fd, or -1 with errno set.
int open_fd(const std::string& path, int flags, mode_t permissions = 0) noexcept;
/// For writing, as file_options say: O_WRONLY | O_CREAT, plus the mode's flag.
int open_fd(const std::string& path, const file_options& options) noexcept;
/// Returns `fd` when it is open; else throws stream_error with the errno
/// ("cannot open <path>"). Call it before anything else can touch errno.
int open_or_throw(int fd, const std::string& path);

}  // namespace sluice::detail
