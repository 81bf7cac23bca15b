"""What comes into rtclab from outside its lab, each made into a run directory marked imported: a real call's RTC
event log (eventlog.py; docs/eventlog.md, "Importing a field call's log"), and a field call's getStats dump from
chrome://webrtc-internals (webrtc_internals.py) or rtcstats (rtcstats.py), analysed as a lab run's getStats
(getstats_dump.py; docs/export.md, "Importing getStats dumps")."""
