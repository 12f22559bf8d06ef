/* array_length.h — spillway stand-in: element count of a true array. */
#ifndef SPILLWAY_ARRAY_LENGTH_H
#define SPILLWAY_ARRAY_LENGTH_H
#define array_length(a) (sizeof (a) / sizeof ((a)[0]))
#endif
