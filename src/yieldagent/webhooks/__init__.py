"""Partner webhooks: signing (``signing``), secrets sealed at rest (``sealing``), and the
delivery job (``delivery``)."""
