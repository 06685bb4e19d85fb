// file_options: how file_sink and file_worker open a file.
#pragma once

#include <sys/types.h>

namespace sluice {

struct file_options {
  enum class open_mode {
    append,    // O_APPEND: every write lands at the end (log files)
    truncate,  // O_TRUNC: start empty
    exclusive, // O_EXCL: fail if the file exists
  };
  open_mode mode = open_mode::truncate;
  mode_t permissions = 0644;  // for a file that is created
  bool fsync_at_end = false;  // fsync() before close at end()
};

}  // namespace sluice
