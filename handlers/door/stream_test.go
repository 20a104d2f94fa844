package door

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"cursor2api/models"
)

func TestConnectionLost(t *testing.T) {
	write := func(errno syscall.Errno) error {
		return &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", errno)}
	}
	for _, tc := range []struct {
		err  error
		lost bool
	}{
		{write(syscall.EPIPE), true},
		{write(syscall.ECONNRESET), true},
		{fmt.Errorf("writing the chunk: %w", write(syscall.EPIPE)), true},
		{io.EOF, false},
		{write(syscall.ETIMEDOUT), false},
		{models.Upstream(502, "upstream_error", nil, "failed"), false},
		{errors.New("broken pipe"), false}, // only the errno counts, not the words
	} {
		assert.Equal(t, tc.lost, connectionLost(tc.err), "%v", tc.err)
	}
}
