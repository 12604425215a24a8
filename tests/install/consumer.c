/* Built against an installed mixp, once through find_package(mixp) and once
 * through pkg-config: checks the header and library versions agree. */
#include <stdio.h>

#include <mixp/mixp.h>

int main(void) {
  if (mixp_version_number() != MIXP_VERSION_NUMBER) {
    fprintf(stderr, "header %d != library %d\n", MIXP_VERSION_NUMBER, mixp_version_number());
    return 1;
  }
  mixp_session *s = NULL;
  if (mixp_session_create(NULL, &s) != MIXP_OK) {
    fprintf(stderr, "%s\n", mixp_last_error());
    return 1;
  }
  mixp_session_destroy(s);
  printf("consumer ok: mixp %s\n", mixp_version());
  return 0;
}
