#include "follow.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <utility>

namespace sluice_tools {

using steady = std::chrono::steady_clock;

namespace {

constexpr std::size_t read_size = 64 * 1024;

// A file's bytes read and not yet handed over: read into directly (a
// std::string would be zero-filled, or copied into, for each read).
class read_buffer {
 public:
  char* data() noexcept { return p_.get(); }
  std::size_t size() const noexcept { return len_; }
  bool empty() const noexcept { return len_ == 0; }
  void clear() noexcept { len_ = 0; }
  // Room for `n` more bytes at the end; commit(k) keeps k of them.
  char* tail(std::size_t n) {
    if (len_ + n > cap_) {
      const std::size_t cap = std::max(len_ + n, cap_ * 2);
      auto p = std::make_unique_for_overwrite<char[]>(cap);
      if (len_ != 0) std::memcpy(p.get(), p_.get(), len_);
      p_ = std::move(p);
      cap_ = cap;
    }
    return p_.get() + len_;
  }
  void commit(std::size_t k) noexcept { len_ += k; }
  // Drops the first `n` bytes (handed over).
  void consume(std::size_t n) noexcept {
    if (n == 0) return;
    std::memmove(p_.get(), p_.get() + n, len_ - n);
    len_ -= n;
  }
  std::string_view view(std::size_t from, std::size_t n) const noexcept { return {p_.get() + from, n}; }
  // The first newline at or after `from`, or npos.
  std::size_t find_newline(std::size_t from) const noexcept {
    const void* nl = len_ > from ? std::memchr(p_.get() + from, '\n', len_ - from) : nullptr;
    return nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - p_.get()) : std::string::npos;
  }

 private:
  std::unique_ptr<char[]> p_;
  std::size_t cap_ = 0, len_ = 0;
};

}  // namespace

// One file being read: what PATH names now, or named before.
struct follower::file {
  std::uint64_t id = 0;
  int fd = -1;
  dev_t dev = 0;
  ino_t ino = 0;
  follow_fingerprint fp;
  read_buffer buf;             // read from buf_off on, not yet handed over as lines
  std::size_t used = 0;        // of buf, handed over
  std::size_t scanned = 0;     // of buf, looked at for a newline
  std::uint64_t buf_off = 0;   // the file offset of buf[0]
  std::uint64_t sent = 0;      // the end of the last line handed over
  std::uint64_t acked = 0;     // the end of the last line acknowledged, with all before it
  std::uint64_t reread_until = 0;  // the last run sent up to here: lines ending there or before are re-read
  std::size_t in_flight = 0;   // lines handed over and not yet settled
  steady::time_point grew;     // the last read that got bytes (or the open)
  bool at_eof = false;
  bool rotated = false;  // PATH names another file, or none
  bool dead = false;     // truncated: its content is gone; dropped once its lines settle, never saved

  ~file() {
    if (fd >= 0) ::close(fd);
  }
  std::uint64_t read_pos() const noexcept { return buf_off + buf.size(); }
};

struct follower::watched {
  std::string path;
  std::string dir;
  std::unique_ptr<file> current;
  std::vector<std::unique_ptr<file>> old;  // read to their end and closed, oldest first
  int wd = -1;                             // the inotify watch on dir
  bool said_kind = false;                  // PATH is not a regular file: said once
};

namespace {

std::string dir_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The file at `path`, opened for reading when it is a regular file: never
// blocks, even on a FIFO put there since the check.
int open_regular(const std::string& path, struct stat& st) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    errno = EINVAL;
    return -1;
  }
  return fd;
}

// Whether `fd` starts with the bytes `fp` was taken of.
bool starts_as(int fd, std::uint64_t size, const follow_fingerprint& fp) {
  if (size < fp.length) return false;
  follow_fingerprint now;
  return take_fingerprint(fd, fp.length, now) && now == fp;
}

}  // namespace

std::string check_follow_path(const tool& t, const char* arg, const std::vector<std::string>& seen) {
  const std::string path = arg;
  if (path.empty()) t.usage_error("--follow is empty");
  if (path.find('\n') != std::string::npos) t.usage_error("--follow: a PATH with a newline is not supported");
  for (const std::string& p : seen)
    if (p == path) t.usage_error("--follow " + path + " is given twice");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return path;
  if (S_ISDIR(st.st_mode)) t.usage_error("--follow " + path + ": a directory; follow the files in it, each by its path");
  if (S_ISFIFO(st.st_mode)) t.usage_error("--follow " + path + ": a FIFO; read it as standard input: sluice-log DEST < " + path);
  if (!S_ISREG(st.st_mode)) t.usage_error("--follow " + path + ": not a regular file");
  return path;
}

void check_not_followed(const tool& t, const std::string& dest, const std::vector<std::string>& paths) {
  struct stat d {};
  const bool dest_there = ::stat(dest.c_str(), &d) == 0;
  for (const std::string& p : paths) {
    struct stat st {};
    if (p == dest || (dest_there && ::stat(p.c_str(), &st) == 0 && st.st_dev == d.st_dev && st.st_ino == d.st_ino))
      t.usage_error("--follow " + p + " is DEST itself: its lines would come back for ever");
  }
}

follower::follower(const follow_options& o, write_fn write, fail_fn fail)
    : o_(o), write_(std::move(write)), fail_(std::move(fail)) {}

follower::~follower() { stop(); }

bool follower::start() {
  std::vector<follow_entry> saved;
  if (!o_.state_dir.empty()) {
    std::string why;
    if (!state_.open(o_.state_dir, why)) {
      std::fprintf(stderr, "sluice-log: --state %s: %s\n", o_.state_dir.c_str(), why.c_str());
      return false;
    }
    have_state_ = true;
    if (!state_.load(saved, why))
      std::fprintf(stderr, "sluice-log: --state %s: %s: every file is read from its start\n", o_.state_dir.c_str(),
                   why.c_str());
  }
  for (const std::string& p : o_.paths) {
    auto w = std::make_unique<watched>();
    w->path = p;
    // The directory the file is in, where its rotations and its writes
    // happen: through a symbolic link, the target's (as it is at start).
    char* real = ::realpath(p.c_str(), nullptr);
    w->dir = dir_of(real ? std::string(real) : p);
    std::free(real);
    std::vector<follow_entry> mine;
    for (const follow_entry& e : saved)
      if (e.path == p) mine.push_back(e);
    restore(*w, mine);
    paths_.push_back(std::move(w));
  }
  inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0)
    std::fprintf(stderr, "sluice-log: inotify: %s: checking the files every --poll-interval instead\n",
                 std::strerror(errno));
  watch_dirs();
  if (inotify_fd_ >= 0)
    sluice::loop::current().watch(inotify_fd_, POLLIN, [this](short) { on_inotify(); }, this);
  arm_poll();
  schedule_pass();
  return true;
}

// The file `e` describes, opened, looked for by its device, inode and
// fingerprint at PATH, then in PATH's directory (where a rotation by
// rename put it); failing that, with `by_fingerprint`, by its fingerprint
// alone among the files there that hold its position (a rotation by copy
// and truncate made a new inode of it). -1 when none is; files in `taken`
// are passed over.
int follower::find_file(const watched& w, const follow_entry& e, bool by_fingerprint,
                        const std::vector<std::pair<dev_t, ino_t>>& taken, struct stat& st) {
  // PATH is followed through a symbolic link, as tail -F does; the links
  // in its directory are not (their targets are found by their own names,
  // or are not rotated files of PATH).
  auto try_file = [&](const std::string& name, bool fp_only, bool is_path) {
    struct stat lst {};
    if ((is_path ? ::stat(name.c_str(), &lst) : ::lstat(name.c_str(), &lst)) != 0 || !S_ISREG(lst.st_mode)) return -1;
    for (auto& t : taken)
      if (t.first == lst.st_dev && t.second == lst.st_ino) return -1;
    if (!fp_only && (lst.st_dev != e.dev || lst.st_ino != e.ino)) return -1;
    if (fp_only && static_cast<std::uint64_t>(lst.st_size) < e.offset) return -1;
    const int fd = open_regular(name, st);
    if (fd < 0) return -1;
    if (st.st_dev == lst.st_dev && st.st_ino == lst.st_ino && starts_as(fd, static_cast<std::uint64_t>(st.st_size), e.fp))
      return fd;
    ::close(fd);
    return -1;
  };
  int fd = try_file(w.path, false, true);
  // A fingerprint of a few bytes says too little to tell files apart.
  const int tries = by_fingerprint && e.fp.length >= 64 ? 2 : 1;
  for (int fp_only = 0; fd < 0 && fp_only < tries; ++fp_only) {
    DIR* d = ::opendir(w.dir.c_str());
    if (!d) break;
    while (const dirent* de = ::readdir(d)) {
      const std::string_view name = de->d_name;
      if (name == "." || name == "..") continue;
      if ((fd = try_file(w.dir + "/" + de->d_name, fp_only != 0, false)) >= 0) break;
    }
    ::closedir(d);
  }
  return fd;
}

// A restart: each file the last run saved is looked for (find_file()),
// and goes on from its saved position; PATH's file that was not saved is
// new, and read from its start.
void follower::restore(watched& w, const std::vector<follow_entry>& saved) {
  struct stat at_path {};
  const bool path_there = ::stat(w.path.c_str(), &at_path) == 0 && S_ISREG(at_path.st_mode);
  std::vector<std::pair<dev_t, ino_t>> taken;
  for (const follow_entry& e : saved) {
    struct stat st {};
    const int fd = find_file(w, e, true, taken, st);
    if (fd < 0) {
      if (e.offset != 0 || e.current)
        std::fprintf(stderr,
                     "sluice-log: --follow %s: the file read before (inode %llu, at byte %llu) is no longer found: "
                     "what it held past that is not sent\n",
                     w.path.c_str(), static_cast<unsigned long long>(e.ino), static_cast<unsigned long long>(e.offset));
      continue;
    }
    taken.emplace_back(st.st_dev, st.st_ino);
    const auto size = static_cast<std::uint64_t>(st.st_size);
    // Smaller than the position, with the same first bytes: truncated and
    // written again while no one was reading.
    const std::uint64_t from = size < e.offset ? 0 : e.offset;
    if (from != e.offset) ++n_.truncations;
    auto f = adopt(fd, st, from);
    f->reread_until = from == 0 && e.offset != 0 ? 0 : e.sent;
    const bool is_path = path_there && st.st_dev == at_path.st_dev && st.st_ino == at_path.st_ino;
    if (is_path && !w.current) {
      w.current = std::move(f);
    } else {
      f->rotated = true;
      w.old.push_back(std::move(f));
    }
  }
  if (!w.current && path_there) w.current = open_file(w.path, 0, true);
}

// A file object for the open `fd`, read from `offset`.
std::unique_ptr<follower::file> follower::adopt(int fd, const struct stat& st, std::uint64_t offset) {
  auto f = std::make_unique<file>();
  f->id = next_id_++;
  f->fd = fd;
  f->dev = st.st_dev;
  f->ino = st.st_ino;
  take_fingerprint(fd, static_cast<std::uint64_t>(st.st_size), f->fp);
  f->buf_off = f->sent = f->acked = offset;
  f->grew = steady::now();
  ++n_.files;
  return f;
}

std::unique_ptr<follower::file> follower::open_file(const std::string& path, std::uint64_t offset, bool say) {
  struct stat st {};
  const int fd = open_regular(path, st);
  if (fd < 0) {
    std::string more;
    if (say && errno != ENOENT && file_note_.due(more))
      std::fprintf(stderr, "sluice-log: --follow %s: %s: tried again%s\n", path.c_str(), std::strerror(errno),
                   more.c_str());
    return nullptr;
  }
  return adopt(fd, st, offset);
}

void follower::watch_dirs() {
  if (inotify_fd_ < 0) return;
  constexpr std::uint32_t mask = IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                 IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;
  // A directory that is not there yet is watched once it is (the poll
  // looks for it meanwhile).
  for (auto& w : paths_)
    if (w->wd < 0) w->wd = ::inotify_add_watch(inotify_fd_, w->dir.c_str(), mask);
}

// Any event starts one pass over all files: the events themselves are not
// needed, as each pass looks at every PATH and file (a stat and an fstat
// each), and a burst of events makes one pass.
void follower::on_inotify() {
  alignas(inotify_event) char buf[16 * 1024];
  for (;;) {
    const ssize_t n = ::read(inotify_fd_, buf, sizeof buf);
    if (n > 0) {
      // A directory removed or moved away ends its watch (IN_IGNORED):
      // watched again by the poll once it is back.
      for (ssize_t at = 0; at < n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buf + at);
        if (ev->mask & IN_IGNORED)
          for (auto& w : paths_)
            if (w->wd == ev->wd) w->wd = -1;
        at += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // EAGAIN: all read
  }
  schedule_pass();
  if (!stopped_) sluice::loop::current().watch(inotify_fd_, POLLIN, [this](short) { on_inotify(); }, this);
}

void follower::arm_poll() {
  poll_timer_ = sluice::loop::current().set_timeout(
      o_.poll_interval,
      [this] {
        poll_timer_ = 0;
        watch_dirs();
        schedule_pass();
        arm_poll();
      },
      this);
}

void follower::schedule_pass() {
  if (pass_queued_ || stopped_) return;
  pass_queued_ = true;
  sluice::loop::current().set_immediate(
      [this] {
        pass_queued_ = false;
        pass();
      },
      this);
}

void follower::resume() {
  if (!waiting_) return;
  waiting_ = false;
  schedule_pass();
}

// One look at every PATH and every file, reading what is new, up to a
// budget, so that the loop gets to the destination's completions between
// passes over a file that grows faster than it is read.
void follower::pass() {
  if (stopped_ || waiting_ || in_pass_) return;
  in_pass_ = true;
  std::size_t budget = 4u << 20;
  bool more = true;
  for (auto& wp : paths_) {
    watched& w = *wp;
    check_path(w);
    for (std::size_t i = 0; more && i < w.old.size();) {
      file& f = *w.old[i];
      more = read_file(w, f, budget);
      if (more && close_if_done(f)) w.old.erase(w.old.begin() + static_cast<std::ptrdiff_t>(i));
      else ++i;
    }
    if (more && w.current) more = read_file(w, *w.current, budget);
    if (!more) break;
  }
  in_pass_ = false;
  if (!stopped_ && !waiting_ && budget == 0) schedule_pass();
}

// What PATH names now: the same file (checked for a truncation), another
// file (a rotation), or nothing (deleted, or renamed and not yet created
// again).
void follower::check_path(watched& w) {
  struct stat st {};
  if (::stat(w.path.c_str(), &st) != 0) {
    if (w.current) {
      ++n_.rotations;
      w.current->rotated = true;
      w.old.push_back(std::move(w.current));
    }
    return;
  }
  if (!S_ISREG(st.st_mode)) {
    if (!w.said_kind)
      std::fprintf(stderr, "sluice-log: --follow %s: not a regular file now: waiting for one\n", w.path.c_str());
    w.said_kind = true;
    return;
  }
  w.said_kind = false;
  if (w.current && w.current->dev == st.st_dev && w.current->ino == st.st_ino) {
    file& f = *w.current;
    const auto size = static_cast<std::uint64_t>(st.st_size);
    // Truncated: smaller than what was read, or its first bytes changed
    // (truncated and written past the position again between two looks).
    if (size >= f.read_pos() && starts_as(f.fd, size, f.fp)) {
      if (f.fp.length < follow_fingerprint_max && size > f.fp.length) take_fingerprint(f.fd, size, f.fp);
      return;
    }
    ++n_.truncations;
    // What was not read yet went into the copy (logrotate copies, then
    // truncates): found by the fingerprint, it is read from where this
    // file's reading was, as a rotated file.
    struct stat cst {};
    const follow_entry was{.path = w.path, .dev = f.dev, .ino = f.ino, .fp = f.fp, .offset = f.read_pos()};
    const int copy = f.fp.length >= 64 ? find_file(w, was, true, {{f.dev, f.ino}}, cst) : -1;
    if (copy >= 0) {
      auto c = adopt(copy, cst, f.buf_off + f.used);
      c->rotated = true;
      w.old.push_back(std::move(c));
    }
    st.st_size = static_cast<off_t>(size);
    auto fresh = adopt(std::exchange(f.fd, -1), st, 0);
    f.dead = true;
    f.buf.clear();
    f.used = f.scanned = 0;
    w.old.push_back(std::move(w.current));
    w.current = std::move(fresh);
    return;
  }
  if (w.current) {
    ++n_.rotations;
    w.current->rotated = true;
    w.old.push_back(std::move(w.current));
  }
  w.current = open_file(w.path, 0, true);
}

// Hands over the whole lines read, then reads on, until the end of the
// file, the budget, or backpressure (false: the pass stops).
bool follower::read_file(watched& w, file& f, std::size_t& budget) {
  if (f.fd < 0) return true;
  for (;;) {
    if (stopped_ || waiting_) return false;
    while (f.used < f.buf.size()) {
      const std::size_t nl = f.buf.find_newline(f.scanned);
      if (nl == std::string::npos) {
        f.scanned = f.buf.size();
        break;
      }
      std::size_t len = nl - f.used;
      if (len > 0 && f.buf.data()[nl - 1] == '\r') --len;
      const std::uint64_t start = f.buf_off + f.used, end = f.buf_off + nl + 1;
      const std::string_view line = f.buf.view(f.used, len);
      f.used = f.scanned = nl + 1;
      if (len > o_.max_line_length) return too_long(w, start);
      if (!emit(f, line, end)) return false;
    }
    if (f.buf.size() - f.used > o_.max_line_length) return too_long(w, f.buf_off + f.used);
    f.buf.consume(f.used);
    f.buf_off += f.used;
    f.scanned -= f.used;
    f.used = 0;
    if (budget == 0) return false;
    const ssize_t n = ::pread(f.fd, f.buf.tail(read_size), read_size, static_cast<off_t>(f.read_pos()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string more;
      if (file_note_.due(more))
        std::fprintf(stderr, "sluice-log: --follow %s: %s: tried again%s\n", w.path.c_str(), std::strerror(errno),
                     more.c_str());
      return true;
    }
    if (n == 0) {
      f.at_eof = true;
      // A last line without its newline waits for it, for partial_wait.
      if (!f.buf.empty() && steady::now() - f.grew >= o_.partial_wait) {
        ++n_.partial;
        const std::uint64_t end = f.read_pos();
        const bool more = emit(f, f.buf.view(0, f.buf.size()), end);
        f.buf_off = end;
        f.buf.clear();
        f.scanned = 0;
        return more;
      }
      return true;
    }
    f.at_eof = false;
    f.grew = steady::now();
    f.buf.commit(static_cast<std::size_t>(n));
    budget -= std::min(budget, static_cast<std::size_t>(n));
    mark_read();
  }
}

// As standard input's: the lines before are sent, then the run ends.
bool follower::too_long(const watched& w, std::uint64_t start) {
  fail_("--follow " + w.path + ": the line at byte " + std::to_string(start) + " is longer than " +
        std::to_string(o_.max_line_length) + " bytes (ERR_LINE_TOO_LONG)");
  return false;
}

bool follower::emit(file& f, std::string_view line, std::uint64_t end) {
  if (end <= f.reread_until) ++n_.reread;
  pending_.push_back({&f, end});
  ++f.in_flight;
  f.sent = end;
  const std::uint64_t ticket = first_ticket_ + (pending_.size() - head_) - 1;
  if (write_(line, ticket)) return true;
  waiting_ = true;
  return false;
}

void follower::acked(std::uint64_t ticket, bool ok) {
  if (ticket < first_ticket_ || ticket - first_ticket_ >= pending_.size() - head_) return;
  pending& p = pending_[head_ + (ticket - first_ticket_)];
  p.done = true;
  p.ok = ok;
  while (head_ < pending_.size() && pending_[head_].done) {
    const pending front = pending_[head_++];
    ++first_ticket_;
    // A line given up (--give-up-after, a refusal) is not acknowledged:
    // the positions stay before it, and a restart sends it again.
    if (!front.ok) gave_up_line_ = true;
    if (!gave_up_line_) {
      front.f->acked = front.end;
      dirty_ = true;
    }
    --front.f->in_flight;
  }
  // The settled front goes once it is half the vector (amortised O(1)).
  if (head_ == pending_.size()) {
    pending_.clear();
    head_ = 0;
  } else if (head_ >= 1024 && head_ * 2 >= pending_.size()) {
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  if (dirty_) schedule_save();
}

// A file PATH no longer names is closed once read to its end, quiet for
// rotate_wait, and every line of it settled; its last line, if it has no
// newline, is sent as it is first.
bool follower::close_if_done(file& f) {
  if (f.dead) return f.in_flight == 0;
  if (!f.rotated || !f.at_eof || steady::now() - f.grew < o_.rotate_wait) return false;
  if (!f.buf.empty()) {
    ++n_.partial;
    const std::uint64_t end = f.read_pos();
    const std::string rest(f.buf.view(0, f.buf.size()));
    f.buf.clear();
    f.buf_off = end;
    f.scanned = 0;
    emit(f, rest, end);
    return false;
  }
  return f.in_flight == 0 && f.acked == f.read_pos();
}

void follower::schedule_save() {
  if (!have_state_ || save_timer_ != 0 || stopped_) return;
  save_timer_ = sluice::loop::current().set_timeout(
      o_.save_interval,
      [this] {
        save_timer_ = 0;
        save();
      },
      this);
}

// Before the lines of a read are handed over: how far each file was read,
// so that a restart after SIGKILL knows which of the lines it reads again
// the last run may have sent, and counts them (re-read). Not synced: it
// only counts, and it survives a SIGKILL in the kernel.
void follower::mark_read() {
  if (!have_state_) return;
  std::vector<follow_entry> marks;
  for (const auto& w : paths_) {
    for (const auto& f : w->old)
      if (!f->dead) marks.push_back({.path = {}, .dev = f->dev, .ino = f->ino, .fp = {}, .offset = 0, .sent = f->read_pos()});
    if (w->current)
      marks.push_back({.path = {}, .dev = w->current->dev, .ino = w->current->ino, .fp = {}, .offset = 0,
                       .sent = w->current->read_pos()});
  }
  state_.mark_read(marks);
}

void follower::save() {
  if (!have_state_) return;
  dirty_ = false;
  std::vector<follow_entry> entries;
  auto add = [&](const watched& w, const file& f, bool current) {
    if (f.dead || f.fd < 0) return;
    entries.push_back({.path = w.path, .dev = f.dev, .ino = f.ino, .fp = f.fp, .offset = f.acked,
                       .sent = std::max(f.sent, f.acked), .current = current});
  };
  for (const auto& w : paths_) {
    for (const auto& f : w->old) add(*w, *f, false);
    if (w->current) add(*w, *w->current, true);
  }
  std::string why, more;
  const bool saved = state_.save(entries, why);
  if (saved) saved_at_ = steady::now();
  if (!saved && state_note_.due(more))
    std::fprintf(stderr,
                 "sluice-log: --state %s: cannot save the positions (%s): following goes on, the last saved ones "
                 "stay%s\n",
                 o_.state_dir.c_str(), why.c_str(), more.c_str());
}

void follower::stop() {
  if (stopped_) return;
  stopped_ = true;
  auto& loop = sluice::loop::current();
  loop.cancel(this);
  poll_timer_ = save_timer_ = 0;
  pass_queued_ = false;
  if (inotify_fd_ >= 0) {
    loop.forget_fd(inotify_fd_);
    ::close(inotify_fd_);
    inotify_fd_ = -1;
  }
}

void follower::save_final() {
  if (have_state_) save();
}

void follower::add_stats(stat_table& t) const {
  using enum metric_type;
  t.insert(t.end(), {
      // "follow_rotations", not "rotations": a FILE DEST has its own.
      {"follow_files", ", followed # files", "sluice_log_follow_files_opened_total", "Files opened by --follow.",
       counter, n_.files},
      {"follow_rotations", " through # rotations", "sluice_log_follow_rotations_total",
       "Times a --follow PATH was found naming another file, or none.", counter, n_.rotations},
      {"truncations", " and # truncations", "sluice_log_follow_truncations_total",
       "Times a followed file was read again from its start (truncated, or copied and truncated).", counter,
       n_.truncations},
      {"reread", ", # re-read", "sluice_log_follow_reread_lines_total",
       "Lines read again after a restart: sent by the last run, not known to be acknowledged.", counter, n_.reread},
      {"partial_lines", ", # partial lines", "sluice_log_follow_partial_lines_total",
       "Last lines sent without their newline, once their file stopped growing.", counter, n_.partial},
      {"state_saves", ", # state saves", "sluice_log_follow_state_saves_total",
       "Times the positions were saved under --state.", counter, state_.saves()},
      {"state_failures", ", # state failures", "sluice_log_follow_state_failures_total",
       "Times the positions could not be saved under --state (ENOSPC, EIO): the last save stays.", counter,
       state_.failures()},
  });
}

void follower::add_gauges(stat_table& t) const {
  using enum metric_type;
  std::uint64_t open = 0, unread = 0;
  auto count = [&](const file& f) {
    if (f.fd < 0) return;
    ++open;
    // The file's size now against what was read: what a reader still has
    // to catch up on. A file truncated under us counts 0, not a negative.
    struct stat st {};
    if (::fstat(f.fd, &st) == 0 && static_cast<std::uint64_t>(st.st_size) > f.read_pos())
      unread += static_cast<std::uint64_t>(st.st_size) - f.read_pos();
  };
  for (const auto& w : paths_) {
    for (const auto& f : w->old) count(*f);
    if (w->current) count(*w->current);
  }
  t.insert(t.end(), {
      {nullptr, nullptr, "sluice_log_follow_files", "Files open for --follow now (rotated ones still read too).",
       gauge, open},
      {nullptr, nullptr, "sluice_log_follow_unread_bytes",
       "Bytes of the followed files behind what was read, now (their sizes less the positions read).", gauge,
       unread},
  });
  if (have_state_) {
    const std::chrono::duration<double> age = steady::now() - saved_at_;
    t.push_back({nullptr, nullptr, "sluice_log_follow_state_age_seconds",
                 "How long ago the positions under --state were last saved (since the start, before the first "
                 "save), now.",
                 gauge, 0, nullptr, {}, age.count()});
  }
}

}  // namespace sluice_tools
