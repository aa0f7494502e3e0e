// libcrypt (Debian's libcrypt-dev, libxcrypt): yescrypt password hashes for Basic auth.
#include <crypt.h>
