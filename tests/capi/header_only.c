/* hushtrace_c.h alone must compile as ISO C11/C17 with -Wall -Wextra -Werror -pedantic
 * (capi_header_* tests). */
#include <hushtrace/hushtrace_c.h>
