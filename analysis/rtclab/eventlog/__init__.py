"""Chrome's RTC event log: the format (rtc_event_log2.proto, rtc_event_log.proto and their generated code), the
parser with its delta decoding, the transport feedback inside it, the join with the captures, GCC's state over time
and the trendline replay. docs/eventlog.md describes it all."""
