#include "CFConformanceSupport.h"

const char *cfc_copy_string(CFStringRef string, char *buffer, long size) {
    if (!string || !CFStringGetCString(string, buffer, size, kCFStringEncodingUTF8)) {
        if (size > 0) buffer[0] = '\0';
    }
    return buffer;
}
