/* support/test-driver.h — spillway stand-in; everything is in ../harness.h. */
#include "../harness.h"
