#include "CFConformanceSupport.h"

#include <sys/eventfd.h>

const char *cfc_copy_string(CFStringRef string, char *buffer, long size) {
    if (!string || !CFStringGetCString(string, buffer, size, kCFStringEncodingUTF8)) {
        if (size > 0) buffer[0] = '\0';
    }
    return buffer;
}

CFRunLoopSourceRef cfc_source1_create(CFIndex order, CFRunLoopSourceContext1 *context) {
    return CFRunLoopSourceCreate(NULL, order, (CFRunLoopSourceContext *)context);
}

int cfc_port_open(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

void cfc_port_make_ready(int port) { (void)eventfd_write(port, 1); }

void cfc_port_drain(int port) {
    eventfd_t count;
    (void)eventfd_read(port, &count);  // EAGAIN when empty: the eventfd is non-blocking
}
