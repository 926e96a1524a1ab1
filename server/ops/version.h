/* version.h — the one place the version of edged is written. */
#ifndef EDGED_VERSION_H
#define EDGED_VERSION_H

#define EDGED_VERSION "0.1.0"

#endif
