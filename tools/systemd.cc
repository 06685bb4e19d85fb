// Socket activation and sd_notify for the tools (systemd.h), on libsystemd's
// sd-daemon API when the build has it.
#include "systemd.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <utility>

#if SLUICE_TOOL_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace sluice_tools::systemd {
namespace {

struct passed_socket {
  std::string name;
  int fd;
};

struct passed_sockets {
  std::vector<passed_socket> sockets;
  int error = 0;  // LISTEN_FDS could not be read: its errno
};

// What systemd passed, read once: libsystemd then unsets LISTEN_PID,
// LISTEN_FDS and LISTEN_FDNAMES (and makes the fds close-on-exec), so that
// no child takes them for its own.
const passed_sockets& passed() {
  static const passed_sockets all = [] {
    passed_sockets p;
#if SLUICE_TOOL_SYSTEMD
    char** names = nullptr;
    const int n = ::sd_listen_fds_with_names(1, &names);
    if (n < 0) p.error = -n;
    for (int i = 0; i < n; ++i)
      p.sockets.push_back({names != nullptr && names[i] != nullptr ? names[i] : "unknown", SD_LISTEN_FDS_START + i});
    if (names != nullptr) {
      for (int i = 0; i < n; ++i) std::free(names[i]);
      std::free(names);
    }
#endif
    return p;
  }();
  return all;
}

[[maybe_unused]] std::string passed_names() {
  const passed_sockets& p = passed();
  if (p.error != 0) return std::string("LISTEN_FDS cannot be read: ") + std::strerror(p.error);
  if (p.sockets.empty()) return "none was: LISTEN_FDS is unset, or LISTEN_PID is another process's";
  std::set<std::string> names;
  for (const passed_socket& s : p.sockets) names.insert(s.name);
  std::string said = "passed: ";
  for (const std::string& n : names) said += (said.size() > 8 ? ", '" : "'") + n + "'";
  return said;
}

// Why `fd` cannot be served as a listener, or nothing.
[[maybe_unused]] std::string not_served(int fd) {
  int type = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0)
    return errno == ENOTSOCK ? "is not a socket" : std::string("cannot be read: ") + std::strerror(errno);
  if (type != SOCK_STREAM) return "is not a stream socket (a socket unit's ListenDatagram=; sluice wants ListenStream=)";
  int accepting = 0;
  len = sizeof accepting;
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) != 0 || accepting == 0)
    return "is a stream socket that does not listen (SO_ACCEPTCONN is off): a socket unit with Accept=yes passes "
           "each connection, not its listening socket; sluice wants Accept=no";
  return "";
}

constexpr std::chrono::seconds status_every{2};

}  // namespace

void check_passed(const tool& t, const std::string& opt, const std::string& addr) {
  const std::string name = addr.substr(3);
#if !SLUICE_TOOL_SYSTEMD
  (void)name;
  t.usage_error(opt + " " + addr +
                ": socket activation is not built in (it needs libsystemd at build time: libsystemd-dev, -Dsystemd)");
#else
  if (name.empty()) t.usage_error(opt + " fd: wants a name: fd:NAME, as a socket unit's FileDescriptorName= sets it");
  static std::set<std::string> taken;
  if (!taken.insert(name).second) t.usage_error(opt + " " + addr + ": given twice (a passed socket is served once)");
  const std::vector<int> fds = passed_fds(addr);
  if (fds.empty()) t.usage_error(opt + " " + addr + ": systemd passed no socket named '" + name + "' (" + passed_names() + ")");
  for (const int fd : fds)
    if (const std::string why = not_served(fd); !why.empty())
      t.usage_error(opt + " " + addr + ": fd " + std::to_string(fd) + " " + why);
#endif
}

std::vector<int> passed_fds(const std::string& addr) {
  std::vector<int> fds;
  const std::string name = addr.substr(3);
  for (const passed_socket& s : passed().sockets)
    if (s.name == name) fds.push_back(s.fd);
  return fds;
}

std::string describe_passed(const std::string& addr, const sluice::net::address_info& a) {
  std::string where;
  if (a.family == "unix") where = "unix:" + a.address;
  else if (a.family == "IPv6") where = "[" + a.address + "]:" + std::to_string(a.port);
  else where = a.address + ":" + std::to_string(a.port);
  return addr + " (" + where + ")";
}

notifier::notifier(std::function<std::string()> status) : status_(std::move(status)) {
#if SLUICE_TOOL_SYSTEMD
  const char* socket = std::getenv("NOTIFY_SOCKET");
  if (socket == nullptr || *socket == '\0') return;
  loop_ = &sluice::loop::current();
  // The timers are no work of the tool's: its loop ends when its work does.
  loop_->unref(this);
  // Set for this process (WATCHDOG_PID, when given, is ours): a ping every
  // half period, as sd_watchdog_enabled(3) advises, from the loop, so that
  // a loop that hangs is restarted.
  std::uint64_t usec = 0;
  if (::sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
    watchdog_every_ = std::chrono::milliseconds(std::max<std::uint64_t>(usec / 2000, 1));
    watchdog();
  }
#endif
}

notifier::~notifier() {
  if (loop_ == nullptr) return;
  loop_->cancel(this);
  loop_->ref(this);  // the loop must not keep this address as unref'd
}

void notifier::send([[maybe_unused]] const std::string& state) {
#if SLUICE_TOOL_SYSTEMD
  // An error (the manager's socket gone) changes nothing in the tool's work.
  if (loop_ != nullptr) ::sd_notify(0, state.c_str());
#endif
}

void notifier::watchdog() {
  send("WATCHDOG=1");
  loop_->set_timeout(watchdog_every_, [this] { watchdog(); }, this);
}

void notifier::ready() {
  if (loop_ == nullptr || ready_) return;
  ready_ = true;
  last_status_ = status_();
  send("READY=1\nSTATUS=" + last_status_);
  loop_->set_timeout(status_every, [this] { status_tick(); }, this);
}

// STATUS= only when it says something new: `systemctl status` shows the
// last one, and a quiet service sends nothing.
void notifier::status_tick() {
  if (stopping_) return;
  std::string now = status_();
  if (now != last_status_) {
    last_status_ = std::move(now);
    send("STATUS=" + last_status_);
  }
  loop_->set_timeout(status_every, [this] { status_tick(); }, this);
}

void notifier::stopping() {
  if (loop_ == nullptr || stopping_) return;
  stopping_ = true;
  send("STOPPING=1\nSTATUS=stopping: " + status_());
}

}  // namespace sluice_tools::systemd
