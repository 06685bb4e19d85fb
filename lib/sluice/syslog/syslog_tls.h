// syslog_tls: syslog over TLS (RFC 5425) for the syslog writable: each of
// its connections becomes a tls::socket over the TCP socket, verified as
// Node's tls.connect() verifies, and a certificate that does not verify
// ends the stream instead of being tried again.
#pragma once

#include <system_error>

#include "sluice/syslog/relp_writable.h"
#include "sluice/syslog/syslog_writable.h"
#include "sluice/tls/socket.h"

namespace sluice::tls {

/// Sets `o`'s wrap and fatal_error: every connection of the syslog writable
/// made with `o` is a TLS client (`tls`'s context, servername,
/// reject_unauthorized, handshake_timeout), verified against `tls.servername`
/// or else o.host. The context (key, certificate, CAs) is loaded now, once,
/// for every connection: throws sluice::stream_error as context::make does
/// (a file that cannot be read, "key values mismatch", ...).
///
///     sluice::syslog_options o{.host = "logs.example.internal", .port = 6514};
///     sluice::tls::socket_options t;
///     t.context.ca_file = "ca.crt";
///     sluice::tls::use_tls(o, t);
///     auto log = sluice::make_syslog_writable(o);
void use_tls(syslog_options& o, const socket_options& tls = {});
/// The same for a RELP writable (RELP over TLS, as rsyslog's imrelp with
/// tls="on" takes it).
void use_tls(relp_options& o, const socket_options& tls = {});

/// Whether `ec` says a certificate was refused: the peer's did not verify
/// (a verification result, ERR_TLS_CERT_ALTNAME_INVALID), or the peer
/// refused ours or its absence (its alert: bad certificate, unknown CA,
/// certificate required, ...). Another attempt with the same certificates
/// fails the same way.
bool is_certificate_error(std::error_code ec) noexcept;

}  // namespace sluice::tls
