package handlers

// withServerFlags returns the options with the command line's metrics,
// HTTP/2 and webhook flags added: the flags win.
func withServerFlags(opts RunOptions, f Flags) RunOptions {
	if f.MetricsSecure != nil {
		opts.InsecureMetrics = !*f.MetricsSecure
	}
	if f.MetricsCertDir != "" {
		opts.MetricsCertDir = f.MetricsCertDir
	}
	opts.EnableHTTP2 = opts.EnableHTTP2 || f.EnableHTTP2
	opts.Webhooks.SelfSigned = opts.Webhooks.SelfSigned || f.WebhookSelfSigned
	if f.WebhookMaxConcurrentReviews != 0 {
		opts.Webhooks.MaxConcurrentReviews = f.WebhookMaxConcurrentReviews
	}
	return opts
}
