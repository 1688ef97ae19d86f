/* The library's own description of itself and the machine, shared by info and bench. */
#ifndef KILN_TOOL_DESCRIBE_H
#define KILN_TOOL_DESCRIBE_H

/* kiln_info_json(NULL, ...) as a malloc'd string; NULL, with the reason on stderr, if the
 * library could not describe itself. */
char *tool_info_json(void);

#endif
