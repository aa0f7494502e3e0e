// ALSA's libasound (PCM capture and playback, the simple mixer), for the Sound module alone.
#ifndef VIEWFINDER_CALSA_H
#define VIEWFINDER_CALSA_H

#include <alsa/asoundlib.h>

#endif
