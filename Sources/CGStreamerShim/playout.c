// libwebrtc's playout-delay RTP header extension (http://www.webrtc.org/experiments/rtp-hdrext/
// playout-delay): the sender tells the receiver how long it may hold a frame before showing
// it, 12 bits of minimum and 12 of maximum in 10 ms steps. Zero and zero is what cloud gaming
// sends, and what a camera preview wants: Chromium then shows each frame as soon as it is
// decoded, instead of holding it for a jitter estimate and a render delay.
#include "private.h"
#include <gst/rtp/gstrtphdrext.h>

typedef struct {
    GstRTPHeaderExtension parent;
} VfgPlayoutDelay;
typedef struct {
    GstRTPHeaderExtensionClass parent_class;
} VfgPlayoutDelayClass;
G_DEFINE_TYPE(VfgPlayoutDelay, vfg_playout_delay, GST_TYPE_RTP_HEADER_EXTENSION)

static GstRTPHeaderExtensionFlags supported_flags(GstRTPHeaderExtension *ext) {
    (void)ext;
    return GST_RTP_HEADER_EXTENSION_ONE_BYTE | GST_RTP_HEADER_EXTENSION_TWO_BYTE;
}

static gsize max_size(GstRTPHeaderExtension *ext, const GstBuffer *input) {
    (void)ext; (void)input;
    return 3;
}

static gssize write_delay(GstRTPHeaderExtension *ext, const GstBuffer *input, GstRTPHeaderExtensionFlags flags,
                          GstBuffer *output, guint8 *data, gsize size) {
    (void)ext; (void)input; (void)flags; (void)output;
    if (size < 3) return -1;
    data[0] = data[1] = data[2] = 0;  // minimum 0, maximum 0
    return 3;
}

static gboolean read_delay(GstRTPHeaderExtension *ext, GstRTPHeaderExtensionFlags flags, const guint8 *data, gsize size,
                           GstBuffer *buffer) {
    (void)ext; (void)flags; (void)data; (void)size; (void)buffer;
    return TRUE;  // a sender's: nothing to read
}

static void vfg_playout_delay_class_init(VfgPlayoutDelayClass *klass) {
    GstRTPHeaderExtensionClass *ext = GST_RTP_HEADER_EXTENSION_CLASS(klass);
    ext->get_supported_flags = supported_flags;
    ext->get_max_size = max_size;
    ext->write = write_delay;
    ext->read = read_delay;
    gst_element_class_set_static_metadata(GST_ELEMENT_CLASS(klass), "Playout delay", GST_RTP_HDREXT_ELEMENT_CLASS,
                                          "Asks the receiver to show each frame as soon as it is decoded", "Viewfinder");
    gst_rtp_header_extension_class_set_uri(ext, VFG_PLAYOUT_DELAY_URI);
}

static void vfg_playout_delay_init(VfgPlayoutDelay *self) { (void)self; }

void vfg_add_playout_delay(GstElement *payloader, guint id) {
    GstRTPHeaderExtension *ext = g_object_new(vfg_playout_delay_get_type(), NULL);
    gst_rtp_header_extension_set_id(ext, id);
    g_signal_emit_by_name(payloader, "add-extension", ext);
    gst_object_unref(ext);
}
