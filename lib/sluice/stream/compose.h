// compose: Node v20's stream.compose(...streams)
// (lib/internal/streams/compose.js), for streams.
#pragma once

#include <initializer_list>
#include <memory>
#include <stop_token>
#include <vector>

#include "sluice/stream/duplex.h"
#include "sluice/stream/stream_ref.h"

namespace sluice {

struct compose_options {
  /// Node: the `signal` of readable.compose(stream, options) (stream.compose
  /// takes none; there one calls addAbortSignal on the result, which is what
  /// this does). Once stopped, the composite is destroyed with an AbortError
  /// (errc::aborted, ABORT_ERR), and with it every stream of the chain.
  std::stop_token signal{};
};

/// Node: compose(s1, s2, ..., sN). One duplex over a chain of streams: what
/// is written to it goes into s1, what sN gives out is read from it, and the
/// streams are pipelined in between (pipeline()'s semantics: an error or a
/// destroy anywhere destroys every stream, and the composite gets the
/// error). Backpressure crosses it both ways: the composite's write() says
/// false as s1's does, and it reads from sN only as fast as its own reader.
///
///     auto c = sluice::compose({gunzip, upper});   // one Transform-like duplex
///     src.pipe(*c).pipe(out);
///
/// The composite's end() ends s1, and its 'finish' comes once the whole chain
/// has finished (sN done: Node waits for finished(sN)); its 'end' comes at
/// sN's 'end'. It is writable only when s1 is writable, readable only when sN
/// is readable: a readable at the head makes a composite nobody writes to.
/// destroy() on the composite destroys sN with the error (an AbortError when
/// there is none), which the pipeline passes to the other streams; the
/// composite is destroyed at once and closes ('error', 'close') once the
/// pipeline has called back, with the pipeline's error (Node's _destroy
/// waits for it: sink::destroy() calls its done then).
///
/// One stream alone is wrapped the same way (Node's Duplex.from(stream);
/// Node returns a duplex itself unwrapped, sluice cannot hand out a stream it
/// does not own).
///
/// compose() does not own the streams, as pipeline() does not: they must
/// outlive the composite, and the chain's end (the pipeline's callback). The
/// composite may go first: the streams are then left as they are.
///
/// Throws stream_error: ERR_MISSING_ARGS for no stream; ERR_INVALID_ARG_VALUE
/// (errc::compose_not_readable) for a stream before the last that is not
/// readable (a writable, or a readable that ended or was destroyed), and
/// (errc::compose_not_writable) for one after the first that is not
/// writable. Nothing is wired when it throws.
std::unique_ptr<duplex> compose(std::initializer_list<stream_ref> streams, const compose_options& options = {});
std::unique_ptr<duplex> compose(const std::vector<stream_ref>& streams, const compose_options& options = {});

}  // namespace sluice
