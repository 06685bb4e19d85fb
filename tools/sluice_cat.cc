// sluice-cat: cat(1) through sluice streams. Each FILE (or standard input)
// is a readable over an fd_source, piped into one fd writable for standard
// output, one file after the other; the pipe's backpressure keeps memory
// bounded however slow the reader of the output is. pipe_zero_copy() lets
// the kernel move the bytes where it can.
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "tool.h"
#include "sluice/sluice.h"

namespace {

constexpr const char* usage_text = R"(usage: sluice-cat [OPTION]... [FILE]...
Concatenates FILEs to standard output, byte for byte, like cat.

With no FILE, or when FILE is -, reads standard input. Each FILE is read by
a sluice readable (an fd_source, 128 KiB a read) piped into a writable over
standard output, so a slow reader of the output slows the reading down
instead of filling memory. Where the kernel can, it moves the bytes itself
(splice when either side is a pipe, copy_file_range from a file to a file,
sendfile from a file to anything else) and nothing is read into memory.

Options:
  --chunk-size N   bytes per read() when the kernel cannot move them (default 131072)
  -h, --help       show this help
  --               the arguments after it are FILEs, even if they start with -

A FILE that cannot be opened or read is reported on standard error as
'sluice-cat: FILE: <reason>'; the other FILEs are still copied, and the exit
status is 1. As cat does, a FILE that is standard output itself (a regular
file, not yet read to its end: 'sluice-cat f >> f') is not copied, since the
copy would never end: 'sluice-cat: f: input file is output file', exit 1.
An error writing standard output (a full disk, a closed pipe) stops the copy
with a message and exit status 1. Exit status 2: bad usage.

Example: sluice-cat header.txt - footer.txt < body.txt > page.txt
)";

constexpr sluice_tools::tool this_tool{"sluice-cat", usage_text};

struct options {
  std::vector<std::string> files;
  std::size_t chunk_size = 128 * 1024;
};

options parse_args(int argc, char** argv) {
  options o;
  enum { chunk_size = 256 };
  static const option long_options[] = {
      {"chunk-size", required_argument, nullptr, chunk_size},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  opterr = 0;
  int c;
  std::uint64_t v = 0;
  while ((c = ::getopt_long(argc, argv, ":h", long_options, nullptr)) != -1) {
    switch (c) {
      case chunk_size:
        if (!sluice_tools::parse_size(optarg, false, 1u << 30, v) || v < 1)
          this_tool.usage_error(std::string("--chunk-size wants a whole number of bytes from 1 to 1073741824, got '") +
                                optarg + "'");
        o.chunk_size = static_cast<std::size_t>(v);
        break;
      case 'h':
        this_tool.help();
      default:
        this_tool.bad_option(c, argv, ":h");
    }
  }
  for (int i = optind; i < argc; ++i) o.files.emplace_back(argv[i]);
  if (o.files.empty()) o.files.emplace_back("-");
  return o;
}

// The copy: one file at a time into `out_`; the next starts once the
// previous readable has closed.
class cat {
 public:
  explicit cat(const options& o) : o_(o) {}

  int run() {
    struct stat st {};
    if (::fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode)) out_file_ = st;
    out_ = sluice::make_fd_writable(STDOUT_FILENO, false, {.high_water_mark = o_.chunk_size});
    out_->on(sluice::event::error, [this](std::error_code ec) { output_failed(ec); });
    auto& loop = sluice::loop::current();
    loop.set_immediate([this] { next_file(); });
    loop.run();
    if (!output_error_ && !finished_) {
      // Nothing left to do and the output never finished: a bug, not a state to hide.
      std::fprintf(stderr, "sluice-cat: the output did not finish\n");
      status_ = 1;
    }
    return status_;
  }

 private:
  // Opens the next FILE and pipes it into the output; at the end, ends the
  // output. A FILE that cannot be opened is reported and skipped.
  void next_file() {
    in_.reset();
    while (!output_error_) {
      if (next_ == o_.files.size()) {
        out_->end([this](std::error_code ec) {
          if (ec) output_failed(ec);
          else finished_ = true;
        });
        return;
      }
      name_ = o_.files[next_++];
      if (open(name_)) break;
    }
    if (output_error_) return;
    in_->on(sluice::event::error, [this](std::error_code ec) { input_failed(ec); });
    // After 'end' (autoDestroy) and after an error: the file is done. Its
    // readable is deleted from the next turn, not from inside its own event.
    in_->on(sluice::event::close, [this] { sluice::loop::current().set_immediate([this] { next_file(); }); });
    // The kernel moves the bytes (splice, copy_file_range, sendfile) where
    // it can; otherwise, and from where it stopped, the pipe reads and writes.
    sluice::pipe_zero_copy(*in_, *out_, {.end = false});
  }

  bool open(const std::string& name) {
    int fd = STDIN_FILENO;
    bool owned = false;
    if (name != "-") {
      do {
        fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
      } while (fd < 0 && errno == EINTR);
      if (fd < 0) {
        input_failed({errno, std::system_category()});
        return false;
      }
      owned = true;
    }
    if (const auto why = refusal(fd)) {
      input_failed(*why);
      if (owned) ::close(fd);
      return false;
    }
    in_ = std::make_unique<sluice::fd_readable>(std::make_unique<sluice::fd_source>(fd, owned, o_.chunk_size),
                                                sluice::readable_options{.high_water_mark = o_.chunk_size});
    return true;
  }

  // cat's check (coreutils 9.1): an input that is the regular file standard
  // output writes to, and still has bytes to read from where it stands,
  // would be copied onto itself until the disk is full. Whether the output
  // appends or stands at its end does not matter; an input already read to
  // its end (or an empty file) copies nothing and passes.
  std::optional<std::string> refusal(int fd) const {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return std::strerror(errno);
    if (out_file_ && st.st_dev == out_file_->st_dev && st.st_ino == out_file_->st_ino &&
        ::lseek(fd, 0, SEEK_CUR) < st.st_size)
      return "input file is output file";
    return std::nullopt;
  }

  void input_failed(std::error_code ec) { input_failed(ec.message()); }
  void input_failed(const std::string& why) {
    std::fprintf(stderr, "sluice-cat: %s: %s\n", name_.c_str(), why.c_str());
    status_ = 1;
  }

  void output_failed(std::error_code ec) {
    if (output_error_) return;
    output_error_ = ec;
    status_ = 1;
    std::fprintf(stderr, "sluice-cat: write error: %s\n", ec.message().c_str());
    // Nothing more can be written: stop reading too.
    if (in_) in_->destroy();
  }

  const options& o_;
  std::optional<struct stat> out_file_;  // standard output, when a regular file
  std::unique_ptr<sluice::fd_writable> out_;
  std::unique_ptr<sluice::fd_readable> in_;
  std::string name_;
  std::size_t next_ = 0;
  int status_ = 0;
  bool finished_ = false;
  std::error_code output_error_;
};

}  // namespace

int main(int argc, char** argv) {
  return this_tool.run(argc, argv, parse_args, [](const options& o) { return cat(o).run(); });
}
