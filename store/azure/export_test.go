package azure

import (
	"context"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/chunkvc/chunkvc/hashing"
)

// CommittedBlocks returns the number of committed blocks of object id's
// blob: 0 for one put whole.
func (s *Store) CommittedBlocks(ctx context.Context, id hashing.ID) (int, error) {
	bl, err := s.client.NewBlockBlobClient(s.key(id)).GetBlockList(ctx, blockblob.BlockListTypeCommitted, nil)
	if err != nil {
		return 0, err
	}
	return len(bl.CommittedBlocks), nil
}

// AccountSAS returns an account SAS token (without '?') that lets its
// holder list, read, write, create and delete blobs and containers for an
// hour.
func AccountSAS(account, key string) (string, error) {
	cred, err := azblob.NewSharedKeyCredential(account, key)
	if err != nil {
		return "", err
	}
	q, err := sas.AccountSignatureValues{
		Protocol:      sas.ProtocolHTTPSandHTTP,
		ExpiryTime:    time.Now().Add(time.Hour).UTC(),
		Permissions:   (&sas.AccountPermissions{Read: true, Write: true, Create: true, Delete: true, List: true}).String(),
		ResourceTypes: (&sas.AccountResourceTypes{Service: true, Container: true, Object: true}).String(),
	}.SignWithSharedKey(cred)
	if err != nil {
		return "", err
	}
	return q.Encode(), nil
}
