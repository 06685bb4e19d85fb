// unix_path: what a Unix listener does to its path in the file system, beside
// bind(2): a socket file left by a listener that died (a crash, an OOM kill,
// SIGKILL) is taken over instead of failing with EADDRINUSE, and the socket
// gets the mode and group asked for before anyone can connect.
#pragma once

#include <sys/types.h>

#include <optional>

#include "sluice/net/address.h"

namespace sluice::net::detail {

/// bind(2) for a listener's fd, before its listen(2); 0, or -1 and errno, as
/// bind() returns. A TCP address is bound as is. A Unix path:
///   - taken by a socket file nobody accepts on (a connect() to it is
///     refused: its listener is gone) is removed and bound again, once;
///     a socket somebody accepts on stays, and so does anything that is not
///     a socket (a file, a directory, a symlink): EADDRINUSE, as before;
///   - once bound, gets `group` (lchown) and then `mode` (chmod, not through
///     a symlink). Both happen before listen(): until then a connect() is
///     refused whatever the mode says, so there is no moment when the socket
///     is reachable with other permissions than asked (no umask is changed,
///     which would touch the files every other thread creates meanwhile).
///     On failure (EPERM: a group the process may not give) the path is
///     removed again and the error returned.
int bind_listener(int fd, const sockaddr_any& at, std::optional<mode_t> mode, std::optional<gid_t> group) noexcept;

/// Whether `path` is a socket file that no listener accepts on: connect()
/// is refused (ECONNREFUSED). False for anything else, or if it is gone.
bool is_stale_socket(const sockaddr_any& at) noexcept;

}  // namespace sluice::net::detail
