// libturbojpeg 2.1 (Debian 12): the tj* API. Only the header is needed.
#ifndef CTURBOJPEG_SHIM_H
#define CTURBOJPEG_SHIM_H
#include <turbojpeg.h>
#endif
