// duplex_pair: Node's stream.duplexPair(options)
// (lib/internal/streams/duplexpair.js; added in Node v22.6.0 and v20.17.0).
#pragma once

#include <memory>
#include <utility>

#include "sluice/stream/duplex.h"

namespace sluice {

/// Node: duplexPair(options). Two connected in-memory duplexes: what one
/// writes, the other reads, chunk for chunk; one's end() is the other's
/// 'end'. A write stays in flight until the reading side asks for more (its
/// _read), so backpressure crosses the pair: the writer's high-water mark
/// counts what the reader has not taken, the reader's says when push() is
/// full. The writer's 'finish' waits for the reader's 'end'. `options` are
/// both sides' (Node passes them to each side's Duplex constructor).
///
///     auto [client, server] = sluice::duplex_pair();
///     server->on(sluice::event::data, [&](std::string_view c) { server->write(c); });  // echo
///     client->write("ping");
///
/// The natural test double for protocol code: each side is a sluice::duplex,
/// as a socket is. Deleting one side while the other still writes fails that
/// write with ERR_STREAM_DESTROYED.
std::pair<std::unique_ptr<duplex>, std::unique_ptr<duplex>> duplex_pair(const duplex_options& options = {});

}  // namespace sluice
