// sites_lib.h — see sites_lib.cpp.
#pragma once
extern "C" {
typedef void *(*Capture)();
void *sequential_fill_site(Capture capture);
void *scatter_add_site(Capture capture);
void *deep_site(Capture capture, int depth);
void *thread_site(Capture capture);
}
