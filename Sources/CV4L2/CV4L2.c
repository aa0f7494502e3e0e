#include "CV4L2.h"
#include <sys/ioctl.h>

// Struct layouts the Swift side relies on (x86_64 / aarch64 Linux).
_Static_assert(sizeof(struct v4l2_capability) == 104, "v4l2_capability layout");
_Static_assert(sizeof(struct v4l2_fmtdesc) == 64, "v4l2_fmtdesc layout");

const unsigned long CV4L2_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
const unsigned long CV4L2_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
const unsigned long CV4L2_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
const unsigned long CV4L2_VIDIOC_ENUM_FRAMEINTERVALS = VIDIOC_ENUM_FRAMEINTERVALS;
const unsigned long CV4L2_VIDIOC_G_FMT = VIDIOC_G_FMT;
const unsigned long CV4L2_VIDIOC_S_FMT = VIDIOC_S_FMT;
const unsigned long CV4L2_VIDIOC_S_PARM = VIDIOC_S_PARM;
const unsigned long CV4L2_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
const unsigned long CV4L2_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
const unsigned long CV4L2_VIDIOC_QBUF = VIDIOC_QBUF;
const unsigned long CV4L2_VIDIOC_DQBUF = VIDIOC_DQBUF;
const unsigned long CV4L2_VIDIOC_STREAMON = VIDIOC_STREAMON;
const unsigned long CV4L2_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;
const unsigned long CV4L2_VIDIOC_QUERYCTRL = VIDIOC_QUERYCTRL;
const unsigned long CV4L2_VIDIOC_G_CTRL = VIDIOC_G_CTRL;
const unsigned long CV4L2_VIDIOC_S_CTRL = VIDIOC_S_CTRL;
const unsigned long CV4L2_VIDIOC_QUERYMENU = VIDIOC_QUERYMENU;

const unsigned int CV4L2_PIX_FMT_YUYV = V4L2_PIX_FMT_YUYV;
const unsigned int CV4L2_PIX_FMT_MJPEG = V4L2_PIX_FMT_MJPEG;
const unsigned int CV4L2_PIX_FMT_NV12 = V4L2_PIX_FMT_NV12;
const unsigned int CV4L2_PIX_FMT_RGB24 = V4L2_PIX_FMT_RGB24;
const unsigned int CV4L2_PIX_FMT_GREY = V4L2_PIX_FMT_GREY;
const unsigned int CV4L2_PIX_FMT_UYVY = V4L2_PIX_FMT_UYVY;
const unsigned int CV4L2_PIX_FMT_YVYU = V4L2_PIX_FMT_YVYU;
const unsigned int CV4L2_PIX_FMT_BGR24 = V4L2_PIX_FMT_BGR24;
const unsigned int CV4L2_PIX_FMT_RGB565 = V4L2_PIX_FMT_RGB565;
const unsigned int CV4L2_PIX_FMT_NV16 = V4L2_PIX_FMT_NV16;
const unsigned int CV4L2_PIX_FMT_YUV420 = V4L2_PIX_FMT_YUV420;

int cv4l2_ioctl(int fd, unsigned long request, void *arg) { return ioctl(fd, request, arg); }
