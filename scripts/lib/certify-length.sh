# How long CI's certification runs each store and front end, for scripts that source this file:
# scripts/certify.sh runs that long, and scripts/certify-planted.sh measures its planted bugs at
# that length, since a bug a run of CI's length misses passes CI.
#
# 30 s: the renewal and stale-step bugs need an owner stopped past its lease while its key is
# taken over; at 15 s a run saw about two such anomalies, and one run in six or seven none.
ci_certify_seconds=30
