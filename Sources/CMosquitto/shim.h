// libmosquitto (MQTT 5 client): the MQTT module alone.
#include <mosquitto.h>
#include <mqtt_protocol.h>
