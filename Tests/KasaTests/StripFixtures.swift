import DriverAPI

// Real payloads from python-kasa's device fixtures (https://github.com/python-kasa/python-kasa,
// commit a29d0610bacd084a2197a7025cf083d4d2a51b02): each is the whole fixture file, as its dump tool wrote it from the
// device (`devtools/dump_devinfo.py`, which scrubs child ids to SCRUBBED_CHILD_DEVICE_ID_<n> and
// names to #MASKED_NAME#). The payloads are data; nothing of python-kasa's code is copied.
enum StripFixtures {
    /// `tests/fixtures/iot/HS300(US)_2.0_1.0.12.json`.
    static let hs300v2 = #"""
        {
            "emeter": {
                "get_realtime": {
                    "current_ma": 6,
                    "err_code": 0,
                    "power_mw": 277,
                    "slot_id": 0,
                    "total_wh": 62,
                    "voltage_mv": 120110
                }
            },
            "system": {
                "get_sysinfo": {
                    "alias": "#MASKED_NAME#",
                    "child_num": 6,
                    "children": [
                        {
                            "alias": "#MASKED_NAME# 1",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_1",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 710216,
                            "state": 1
                        },
                        {
                            "alias": "#MASKED_NAME# 2",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_2",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 710216,
                            "state": 1
                        },
                        {
                            "alias": "#MASKED_NAME# 3",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_3",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 710216,
                            "state": 1
                        },
                        {
                            "alias": "#MASKED_NAME# 4",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_4",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 710216,
                            "state": 1
                        },
                        {
                            "alias": "#MASKED_NAME# 5",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_5",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 710216,
                            "state": 1
                        },
                        {
                            "alias": "#MASKED_NAME# 6",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_6",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 710216,
                            "state": 1
                        }
                    ],
                    "deviceId": "0000000000000000000000000000000000000000",
                    "err_code": 0,
                    "feature": "TIM:ENE",
                    "hwId": "00000000000000000000000000000000",
                    "hw_ver": "2.0",
                    "latitude_i": 0,
                    "led_off": 0,
                    "longitude_i": 0,
                    "mac": "C0:06:C3:00:00:00",
                    "mic_type": "IOT.SMARTPLUGSWITCH",
                    "model": "HS300(US)",
                    "oemId": "00000000000000000000000000000000",
                    "rssi": -44,
                    "status": "new",
                    "sw_ver": "1.0.12 Build 220121 Rel.175814",
                    "updating": 0
                }
            }
        }
        """#

    /// `tests/fixtures/iot/HS300(US)_1.0_1.0.21.json`.
    static let hs300v1 = #"""
        {
            "emeter": {
                "get_realtime": {
                    "current_ma": 544,
                    "err_code": 0,
                    "power_mw": 62430,
                    "total_wh": 26889,
                    "voltage_mv": 118389
                }
            },
            "system": {
                "get_sysinfo": {
                    "alias": "#MASKED_NAME#",
                    "child_num": 6,
                    "children": [
                        {
                            "alias": "#MASKED_NAME# 1",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_1",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 1449897,
                            "state": 1
                        },
                        {
                            "alias": "#MASKED_NAME# 2",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_2",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 1449897,
                            "state": 1
                        },
                        {
                            "alias": "#MASKED_NAME# 3",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_3",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 1449897,
                            "state": 1
                        },
                        {
                            "alias": "#MASKED_NAME# 4",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_4",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 1449897,
                            "state": 1
                        },
                        {
                            "alias": "#MASKED_NAME# 5",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_5",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 1449897,
                            "state": 1
                        },
                        {
                            "alias": "#MASKED_NAME# 6",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_6",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 1449897,
                            "state": 1
                        }
                    ],
                    "deviceId": "0000000000000000000000000000000000000000",
                    "err_code": 0,
                    "feature": "TIM:ENE",
                    "hwId": "00000000000000000000000000000000",
                    "hw_ver": "1.0",
                    "latitude_i": 0,
                    "led_off": 0,
                    "longitude_i": 0,
                    "mac": "00:00:00:00:00:00",
                    "mic_type": "IOT.SMARTPLUGSWITCH",
                    "model": "HS300(US)",
                    "oemId": "00000000000000000000000000000000",
                    "rssi": -39,
                    "status": "new",
                    "sw_ver": "1.0.21 Build 210524 Rel.161309",
                    "updating": 0
                }
            }
        }
        """#

    /// `tests/fixtures/iot/HS300(US)_1.0_1.0.10.json`.
    static let hs300v1old = #"""
        {
            "emeter": {
                "get_realtime": {
                    "current_ma": 4,
                    "err_code": 0,
                    "power_mw": 17,
                    "total_wh": 1279,
                    "voltage_mv": 122414
                }
            },
            "smartlife.iot.common.emeter": {
                "err_code": -1,
                "err_msg": "module not support"
            },
            "smartlife.iot.dimmer": {
                "err_code": -1,
                "err_msg": "module not support"
            },
            "smartlife.iot.smartbulb.lightingservice": {
                "err_code": -1,
                "err_msg": "module not support"
            },
            "system": {
                "get_sysinfo": {
                    "alias": "#MASKED_NAME#",
                    "child_num": 6,
                    "children": [
                        {
                            "alias": "#MASKED_NAME# 1",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_1",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 0,
                            "state": 0
                        },
                        {
                            "alias": "#MASKED_NAME# 2",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_2",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 0,
                            "state": 0
                        },
                        {
                            "alias": "#MASKED_NAME# 3",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_3",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 0,
                            "state": 0
                        },
                        {
                            "alias": "#MASKED_NAME# 4",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_4",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 0,
                            "state": 0
                        },
                        {
                            "alias": "#MASKED_NAME# 5",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_5",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 0,
                            "state": 0
                        },
                        {
                            "alias": "#MASKED_NAME# 6",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_6",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": -32407,
                            "state": 1
                        }
                    ],
                    "deviceId": "0000000000000000000000000000000000000000",
                    "err_code": 0,
                    "feature": "TIM:ENE",
                    "hwId": "00000000000000000000000000000000",
                    "hw_ver": "1.0",
                    "latitude_i": 0,
                    "led_off": 0,
                    "longitude_i": 0,
                    "mac": "00:00:00:00:00:00",
                    "mic_type": "IOT.SMARTPLUGSWITCH",
                    "model": "HS300(US)",
                    "oemId": "00000000000000000000000000000000",
                    "rssi": -62,
                    "sw_ver": "1.0.10 Build 190103 Rel.163517",
                    "updating": 0
                }
            }
        }
        """#

    /// `tests/fixtures/iot/HS300(US)_2.0_1.0.3.json`.
    static let hs300v2old = #"""
        {
            "emeter": {
                "get_realtime": {
                    "current_ma": 0,
                    "err_code": 0,
                    "power_mw": 0,
                    "slot_id": 0,
                    "total_wh": 0,
                    "voltage_mv": 121302
                }
            },
            "system": {
                "get_sysinfo": {
                    "alias": "#MASKED_NAME#",
                    "child_num": 6,
                    "children": [
                        {
                            "alias": "#MASKED_NAME# 1",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_1",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 0,
                            "state": 0
                        },
                        {
                            "alias": "#MASKED_NAME# 2",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_2",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 0,
                            "state": 0
                        },
                        {
                            "alias": "#MASKED_NAME# 3",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_3",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 0,
                            "state": 0
                        },
                        {
                            "alias": "#MASKED_NAME# 4",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_4",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 0,
                            "state": 0
                        },
                        {
                            "alias": "#MASKED_NAME# 5",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_5",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 0,
                            "state": 0
                        },
                        {
                            "alias": "#MASKED_NAME# 6",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_6",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 0,
                            "state": 0
                        }
                    ],
                    "deviceId": "0000000000000000000000000000000000000000",
                    "err_code": 0,
                    "feature": "TIM:ENE",
                    "hwId": "00000000000000000000000000000000",
                    "hw_ver": "2.0",
                    "latitude_i": 0,
                    "led_off": 0,
                    "longitude_i": 0,
                    "mac": "00:00:00:00:00:00",
                    "mic_type": "IOT.SMARTPLUGSWITCH",
                    "model": "HS300(US)",
                    "oemId": "00000000000000000000000000000000",
                    "rssi": -55,
                    "status": "new",
                    "sw_ver": "1.0.3 Build 201203 Rel.165457",
                    "updating": 0
                }
            }
        }
        """#

    /// `tests/fixtures/iot/KP303(UK)_1.0_1.0.3.json`.
    static let kp303 = #"""
        {
            "system": {
                "get_sysinfo": {
                    "alias": "#MASKED_NAME#",
                    "child_num": 3,
                    "children": [
                        {
                            "alias": "#MASKED_NAME# 1",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_1",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 79701,
                            "state": 1
                        },
                        {
                            "alias": "#MASKED_NAME# 2",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_2",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 79700,
                            "state": 0
                        },
                        {
                            "alias": "#MASKED_NAME# 3",
                            "id": "SCRUBBED_CHILD_DEVICE_ID_3",
                            "next_action": {
                                "type": -1
                            },
                            "on_time": 1484408,
                            "state": 0
                        }
                    ],
                    "deviceId": "0000000000000000000000000000000000000000",
                    "err_code": 0,
                    "feature": "TIM",
                    "hwId": "00000000000000000000000000000000",
                    "hw_ver": "1.0",
                    "latitude_i": 0,
                    "led_off": 1,
                    "longitude_i": 0,
                    "mac": "1C:3B:F3:00:00:00",
                    "mic_type": "IOT.SMARTPLUGSWITCH",
                    "model": "KP303(UK)",
                    "ntc_state": 0,
                    "oemId": "00000000000000000000000000000000",
                    "rssi": -68,
                    "status": "new",
                    "sw_ver": "1.0.3 Build 191105 Rel.113122",
                    "updating": 0
                }
            }
        }
        """#

    /// A fixture's `module.method` reply (the fixture must parse and hold it).
    static func reply(_ fixture: String, _ module: String, _ method: String) -> JSONValue {
        ((try? JSONValue.parse(fixture))?[module]?[method]) ?? [:]
    }
}
