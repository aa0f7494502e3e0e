// zbar: the metadata output's decoder (the Metadata module alone).
#include <zbar.h>
