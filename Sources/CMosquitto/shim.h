#ifndef HUB_CMOSQUITTO_SHIM_H
#define HUB_CMOSQUITTO_SHIM_H
// libmosquitto (system package libmosquitto-dev, 2.0.x) for the MQTT target.
#include <mosquitto.h>
#include <mqtt_protocol.h>
#endif
