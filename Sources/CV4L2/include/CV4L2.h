// V4L2 for Swift: the VIDIOC_* and V4L2_PIX_FMT_* macros are function-like (_IOWR, v4l2_fourcc)
// and invisible to Swift, so they are re-exported as constants. No logic lives here.
#ifndef CV4L2_H
#define CV4L2_H
#include <linux/videodev2.h>

extern const unsigned long CV4L2_VIDIOC_QUERYCAP;
extern const unsigned long CV4L2_VIDIOC_ENUM_FMT;
extern const unsigned long CV4L2_VIDIOC_ENUM_FRAMESIZES;
extern const unsigned long CV4L2_VIDIOC_ENUM_FRAMEINTERVALS;
extern const unsigned long CV4L2_VIDIOC_G_FMT;
extern const unsigned long CV4L2_VIDIOC_S_FMT;
extern const unsigned long CV4L2_VIDIOC_S_PARM;
extern const unsigned long CV4L2_VIDIOC_REQBUFS;
extern const unsigned long CV4L2_VIDIOC_QUERYBUF;
extern const unsigned long CV4L2_VIDIOC_QBUF;
extern const unsigned long CV4L2_VIDIOC_DQBUF;
extern const unsigned long CV4L2_VIDIOC_STREAMON;
extern const unsigned long CV4L2_VIDIOC_STREAMOFF;
extern const unsigned long CV4L2_VIDIOC_QUERYCTRL;
extern const unsigned long CV4L2_VIDIOC_G_CTRL;
extern const unsigned long CV4L2_VIDIOC_S_CTRL;
extern const unsigned long CV4L2_VIDIOC_QUERYMENU;

extern const unsigned int CV4L2_PIX_FMT_YUYV;
extern const unsigned int CV4L2_PIX_FMT_MJPEG;
extern const unsigned int CV4L2_PIX_FMT_NV12;
extern const unsigned int CV4L2_PIX_FMT_RGB24;
extern const unsigned int CV4L2_PIX_FMT_GREY;
extern const unsigned int CV4L2_PIX_FMT_UYVY;
extern const unsigned int CV4L2_PIX_FMT_YVYU;
extern const unsigned int CV4L2_PIX_FMT_BGR24;
extern const unsigned int CV4L2_PIX_FMT_RGB565;
extern const unsigned int CV4L2_PIX_FMT_NV16;
extern const unsigned int CV4L2_PIX_FMT_YUV420; /* 'YU12' */

/// ioctl with a fixed (non-variadic) signature; errno is left for the caller to read once.
int cv4l2_ioctl(int fd, unsigned long request, void *arg);
#endif
