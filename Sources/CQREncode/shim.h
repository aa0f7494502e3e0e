// libqrencode: QR symbols for the synthetic camera's scene (the Barcodes module alone).
#include <qrencode.h>
