"""Webhooks: an account's endpoints (endpoints), the events made for them from the changes feed
(events), and each event's delivery with its retries (deliveries)."""
