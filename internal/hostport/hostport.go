// Package hostport renders listener addresses for the URLs tablegate
// prints.
package hostport

import (
	"fmt"
	"net"
)

// Of renders a listener address for URLs (an unspecified address such as
// 0.0.0.0 becomes 127.0.0.1).
func Of(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	ip := tcp.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return net.JoinHostPort(ip.String(), fmt.Sprint(tcp.Port))
}

// Everywhere notes a listener bound to every interface: Of names
// 127.0.0.1 for it, which must not read as loopback only. It is "" for
// any other listener.
func Everywhere(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok && (tcp.IP == nil || tcp.IP.IsUnspecified()) {
		return " — listening on every interface, reachable from the network"
	}
	return ""
}
