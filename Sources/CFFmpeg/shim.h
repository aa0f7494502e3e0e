// FFmpeg's libavcodec (libx264 through it), libavformat (MP4 muxing), libswscale,
// libswresample (a microphone's rate to a codec's) and libavutil, for the Movie module
// alone. Macros Swift cannot import are spelled as functions here.
#ifndef VIEWFINDER_CFFMPEG_H
#define VIEWFINDER_CFFMPEG_H

#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavutil/avutil.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
#include <libavutil/hwcontext.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>

static inline int cff_averror(int e) { return AVERROR(e); }
static inline int cff_eagain(void) { return AVERROR(EAGAIN); }
static inline int cff_eof(void) { return AVERROR_EOF; }
static inline int64_t cff_nopts(void) { return AV_NOPTS_VALUE; }

/// av_err2str without the compound literal.
static inline void cff_strerror(int code, char *buf, size_t size) { av_strerror(code, buf, size); }

#endif
