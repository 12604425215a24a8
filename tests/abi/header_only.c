/* Compiled with -std=c99 -pedantic -Werror: the public header must be plain C99. */
#include "mixp/mixp.h"

int main(void) {
  mixp_session_options o;
  mixp_session_options_init(&o);
  return (int)o.struct_size == 0 ? 1 : 0;
}
