// The umbrella header: everything public in sluice.
#pragma once

#include "sluice/emitter.h"
#include "sluice/errors.h"
#include "sluice/function.h"
#include "sluice/loop.h"
#include "sluice/sinks/fd_sink.h"
#include "sluice/sinks/file_sink.h"
#include "sluice/sinks/memory_sink.h"
#include "sluice/sinks/null_sink.h"
#include "sluice/sinks/sink.h"
#include "sluice/stream/writable.h"
