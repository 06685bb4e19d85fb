// What sluice-log and sluice-logd say of a rotated file that stays plain
// (log_options::on_compress_problem): on standard error, rate-limited, from
// the compressor's thread (one at a time, so the note needs no lock).
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "args.h"
#include "rate_limited_note.h"
#include "sluice/log_file/log_options.h"

namespace sluice_tools {

// Sets `log`'s hook, saying problems as `tool`. The note is shared by the
// copies of the hook and lives as long as they do.
inline void say_compress_problems(sluice::log_options& log, const char* tool) {
  if (log.compress == sluice::log_options::compression::none) return;
  auto note = std::make_shared<rate_limited_note>();
  const std::string suffix = log.compress == sluice::log_options::compression::gzip ? ".gz" : ".zst";
  log.on_compress_problem = [note, tool, suffix](const sluice::log_options::compress_problem& p) {
    std::string more;
    if (!note->due(more)) return;
    if (p.bad_twin)
      std::fprintf(stderr, "%s: %s%s is not a whole compressed copy of %s: both kept, %s plain%s\n", tool,
                   p.file.c_str(), suffix.c_str(), p.file.c_str(), p.file.c_str(), more.c_str());
    else
      std::fprintf(stderr, "%s: %s: not compressed: %s; it stays plain, and is tried again%s\n", tool, p.file.c_str(),
                   file_error(p.error).c_str(), more.c_str());
  };
}

}  // namespace sluice_tools
