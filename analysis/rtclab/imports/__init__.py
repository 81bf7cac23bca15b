"""What comes into rtclab from outside its lab: a real call's RTC event log (eventlog.py), made into a run directory
marked imported, analysed by the analyzer's own event-log code (docs/eventlog.md, "Importing a field call's log")."""
